/**
 * What an app command answers, on REST (`POST /api/_commands/<name>`, 200) and as its MCP tool's result (the
 * text and, parsed, the structuredContent), the same bytes on both:
 *
 *   {"command":"lend","correlation":"<uuid>","changes":[{"type":"books","id":"1","kind":"invoked","version":4,"row":{...}}, ...]}
 *
 * One change per event the command wrote, in the order its `decide` returned them: the row's type, id, the event's
 * kind and the row's version after it, and the row after it as a GET serves it (null for a delete). Every event
 * in the log carries `command` and `correlation` too, so a log reader can regroup the command.
 */
import type { CommandCommitted } from "../../commands/commands.ts"

export const commandBody = (c: CommandCommitted): string => {
  const changes = c.changes.map(({ event, row, rowJson }) =>
    `{"type":${JSON.stringify(event.type)},"id":${JSON.stringify(event.id)},"kind":"${event.kind}","version":${event.version},` +
    `"row":${row === null ? "null" : rowJson ?? JSON.stringify(row)}}`)
  return `{"command":${JSON.stringify(c.command)},"correlation":${JSON.stringify(c.correlation)},"changes":[${changes.join(",")}]}`
}
