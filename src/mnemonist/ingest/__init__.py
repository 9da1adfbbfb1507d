"""Getting outside content in: chunking of long texts and the guarded URL fetcher."""
