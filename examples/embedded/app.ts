/**
 * The ticket desk: agents and the tickets they work on. A ticket is assigned, escalated and closed only through
 * its methods and the `escalate` command (status, assignee and priority are guarded), and an assignee must be a
 * live agent (`ref("agents")`): assigning a ticket to an agent that does not exist is refused `missing_reference`.
 */
import { Schema } from "effect"
import { defineApp, entity, ref, reject, view } from "writeonce"

const Status = Schema.Literal("open", "assigned", "closed")

const agents = entity({
  description: "Someone who works on tickets.",
  fields: {
    name: Schema.String.pipe(Schema.minLength(1)),
    escalations: Schema.Int.pipe(Schema.optionalWith({ default: () => 0 }))
  },
  guarded: ["escalations"],
  methods: {
    take_escalation: {
      description: "Count one more escalated ticket on the agent.",
      params: {},
      apply: (agent) => ({ escalations: agent.escalations + 1 })
    }
  }
})

const tickets = entity({
  description: "A customer's problem, open until an agent closes it.",
  fields: {
    title: Schema.String.pipe(Schema.minLength(1)),
    status: Status.pipe(Schema.optionalWith({ default: () => "open" as const })),
    priority: Schema.Literal("normal", "urgent").pipe(Schema.optionalWith({ default: () => "normal" as const })),
    assignee: ref("agents").pipe(Schema.optional)
  },
  guarded: ["status", "priority", "assignee"],
  indexes: ["status"],
  methods: {
    assign: {
      description: "Give the ticket to an agent.",
      params: { agent: ref("agents") },
      apply: (ticket, { agent }) =>
        ticket.status === "closed" ? reject("closed", `ticket ${ticket.id} is closed`) : { assignee: agent, status: "assigned" as const }
    },
    escalate_to: {
      description: "Give the ticket to an agent as urgent.",
      params: { agent: ref("agents") },
      apply: (ticket, { agent }) =>
        ticket.status === "closed"
          ? reject("closed", `ticket ${ticket.id} is closed`)
          : { assignee: agent, status: "assigned" as const, priority: "urgent" as const }
    },
    close: {
      description: "Close the ticket.",
      params: {},
      apply: (ticket) => (ticket.status === "closed" ? reject("already_closed", `ticket ${ticket.id} is already closed`) : { status: "closed" as const })
    }
  }
})

export default defineApp({
  name: "ticket-desk",
  description: "A help desk: agents work on tickets.",
  entities: { agents, tickets },
  commands: {
    escalate: {
      description: "Make a ticket urgent and give it to an agent, counting the escalation on the agent, in one atomic write.",
      params: { ticket: ref("tickets"), agent: ref("agents") },
      decide: (ctx, { ticket, agent }) => [
        ctx.invoke("tickets", ticket, "escalate_to", { agent }),
        ctx.invoke("agents", agent, "take_escalation")
      ]
    }
  },
  views: {
    tickets_by_status: view({
      description: "How many tickets are open, assigned and closed.",
      schema: Schema.Struct({ open: Schema.Int, assigned: Schema.Int, closed: Schema.Int }),
      initial: { open: 0, assigned: 0, closed: 0 },
      on: { tickets: ["created", "updated", "invoked", "deleted"] },
      evolve: (counts, { before, after }) => {
        const next = { ...counts }
        if (before !== null) next[before.status as "open" | "assigned" | "closed"] -= 1
        if (after !== null) next[after.status as "open" | "assigned" | "closed"] += 1
        return next
      }
    })
  }
})
