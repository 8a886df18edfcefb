/** The agents card: legacy sessions and modern listen streams, with what each one subscribes to. */
import type { AgentsView } from "../wire.ts"
import { fill, h } from "./dom.ts"
import { showTime } from "./format.ts"

const uris = (list: ReadonlyArray<string>, extra?: string) =>
  list.length === 0 && extra === undefined
    ? h("span", { class: "none" }, "nothing yet")
    : h("span", { class: "uris" }, list.map((u) => h("code", {}, u)), extra ? h("span", { class: "tag" }, extra) : null)

export const renderAgents = (agents: AgentsView) =>
  fill("agents",
    h("h3", {}, "Legacy sessions ", h("span", { class: "hint" }, "2025-03-26 … 2025-11-25: initialize, then a GET stream")),
    agents.sessions.length === 0
      ? h("p", { class: "none" }, "No legacy session. Connect one with the config below.")
      : h("table", { class: "agents" },
        h("thead", {}, h("tr", {}, ["session", "version", "stream", "last seen", "subscriptions"].map((c) => h("th", {}, c)))),
        h("tbody", {}, agents.sessions.map((s) =>
          h("tr", {},
            h("td", {}, h("code", {}, s.id)),
            h("td", {}, s.version),
            h("td", {}, h("span", { class: s.streaming ? "dot on" : "dot" }), s.streaming ? "open" : "none"),
            h("td", { class: "time" }, showTime(s.lastSeen)),
            h("td", {}, uris(s.subscriptions)))))),
    h("h3", {}, "Listen streams ", h("span", { class: "hint" }, "2026-07-28: stateless, subscriptions/listen")),
    agents.listens.length === 0
      ? h("p", { class: "none" }, "No listen stream open.")
      : h("table", { class: "agents" },
        h("thead", {}, h("tr", {}, ["request id", "since seq", "subscriptions"].map((c) => h("th", {}, c)))),
        h("tbody", {}, agents.listens.map((l) =>
          h("tr", {},
            h("td", {}, h("code", {}, l.id)),
            h("td", { class: "num" }, l.since),
            h("td", {}, uris(l.subscriptions, l.listChanges ? "list changes" : undefined)))))))
