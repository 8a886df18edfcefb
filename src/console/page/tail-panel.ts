/**
 * The event-log card: the newest events first, each with its sequence, time, kind, who made it (its actor, the
 * whole of it in the tooltip), row and a compact diff; an event written by an app command is tagged with the command
 * (its correlation id in the tooltip).
 */
import type { StoredEvent } from "../wire.ts"
import { fill, h } from "./dom.ts"
import { describeActor, showActor, showChanges, showTime, type FieldChange } from "./format.ts"

/** The DOM keeps this many; the log itself keeps everything. */
const KEEP = 200

export class TailPanel {
  private readonly body = h("tbody")
  private readonly empty = h("tr", { class: "empty" }, h("td", { colspan: "6" }, "waiting for the first event…"))

  constructor() {
    this.body.append(this.empty)
    fill("tail",
      h("div", { class: "scroll tall" },
        h("table", { class: "events" },
          h("thead", {}, h("tr", {}, ["seq", "time", "event", "by", "row", "change"].map((c) => h("th", {}, c)))),
          this.body)))
  }

  add(event: StoredEvent, changes: ReadonlyArray<FieldChange>) {
    this.empty.remove()
    const kind = event.kind === "invoked" ? event.method ?? "invoked" : event.kind
    this.body.prepend(
      h("tr", { "data-seq": String(event.seq), class: "fresh" },
        h("td", { class: "num" }, event.seq),
        h("td", { class: "time" }, showTime(event.at)),
        h("td", {},
          h("span", { class: `kind kind-${event.kind}` }, kind),
          event.command === undefined ? null : h("span", { class: "tag", title: `correlation ${event.correlation ?? ""}` }, `by ${event.command}`)),
        h("td", { class: "actor", title: describeActor(event.actor) }, showActor(event.actor)),
        h("td", { class: "row" }, h("code", {}, `${event.type}/${event.id}`), h("span", { class: "muted" }, ` v${event.version}`)),
        h("td", { class: "diff" }, showChanges(event, changes))))
    while (this.body.childElementCount > KEEP) this.body.lastElementChild!.remove()
  }
}
