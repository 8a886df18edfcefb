/** Server-Sent Events framing. Each JSON message stays on one `data:` line, which every client parses. */

export interface SseEvent {
  readonly id?: string
  readonly event?: string
  readonly data: string
  readonly retry?: number
}

export const sseFrame = ({ id, event, data, retry }: SseEvent): string =>
  `${id !== undefined ? `id: ${id}\n` : ""}${event !== undefined ? `event: ${event}\n` : ""}${retry !== undefined ? `retry: ${retry}\n` : ""}data: ${data}\n\n`

export const SSE_HEADERS = { "content-type": "text/event-stream" } as const
