"""The write-transaction flag, now `mnemonist.guards.write_tx` (below both the store and the
providers); these names stay for the store's own modules that import them from here."""

from mnemonist.guards.write_tx import (
    WriteLockViolation,
    assert_not_in_write_tx,
    enter,
    in_write_tx,
    leave,
)

__all__ = ["WriteLockViolation", "assert_not_in_write_tx", "enter", "in_write_tx", "leave"]
