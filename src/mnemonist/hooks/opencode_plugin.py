"""The OpenCode plugin `mnemonist connect opencode` writes (`__MNEMONIST__`: the program)."""

TEMPLATE = r"""// mnemonist: added by `mnemonist connect opencode`
// (`mnemonist disconnect opencode` removes it).
// Pipes OpenCode's session events to `mnemonist hook <event> --format text --harness opencode`
// (the daemon must run: mnemonist serve) and adds what the hooks print to the conversation.
import { spawnSync } from "node:child_process"

const MNEMONIST = __MNEMONIST__

function hook(event, payload) {
  const run = spawnSync(MNEMONIST, ["hook", event, "--format", "text", "--harness", "opencode"],
    { input: JSON.stringify(payload), encoding: "utf8", timeout: 15000 })
  return run.status === 0 && run.stdout ? run.stdout.trim() : ""
}

function textOf(parts) {
  return (parts || []).filter((p) => p.type === "text" && p.text).map((p) => p.text).join("\n")
}

export const Mnemonist = async ({ client, directory }) => {
  const base = (id) => ({ session_id: id, cwd: directory })
  const tell = async (id, text) => {
    if (!text) return
    try {
      const parts = [{ type: "text", text }]
      await client.session.prompt({ path: { id }, body: { noReply: true, parts } })
    } catch (_) {}
  }
  const transcript = async (id) => {
    try {
      const res = await client.session.messages({ path: { id } })
      return (res.data || []).map((m) => `${m.info.role}: ${textOf(m.parts)}`).join("\n\n")
    } catch (_) {
      return ""
    }
  }
  return {
    event: async ({ event }) => {
      const props = event.properties || {}
      const id = props.sessionID || (props.info && props.info.id)
      if (!id) return
      if (event.type === "session.created") {
        await tell(id, hook("session-start", { ...base(id), source: "startup" }))
      } else if (event.type === "session.compacted") {
        hook("compaction-complete", base(id))
      } else if (event.type === "session.idle" || event.type === "session.deleted") {
        hook("session-end", { ...base(id), transcript: await transcript(id) })
      }
    },
    "chat.message": async (input, output) => {
      const prompt = textOf(output.parts)
      if (!prompt || !input.sessionID) return
      const context = hook("user-prompt-submit", { ...base(input.sessionID), prompt })
      if (context) output.parts.push({ type: "text", text: context, synthetic: true })
    },
  }
}
"""
