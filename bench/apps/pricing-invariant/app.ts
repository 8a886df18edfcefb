/** examples/pricing with one invariant declared on products: what bench/scenarios/invariant.ts weighs. */
import { Schema } from "effect"
import { defineApp, entity, reject } from "writeonce"

const Price = Schema.Number.pipe(Schema.positive({ message: () => "price must be a positive number" }))

export default defineApp({
  name: "pricing",
  entities: {
    products: entity({
      fields: {
        name: Schema.String.pipe(Schema.minLength(1)),
        price: Price,
        currency: Schema.Literal("USD", "EUR")
      },
      methods: {
        set_price: {
          params: { price: Schema.Number },
          apply: (_row, { price }) => (price > 0 ? { price } : reject("not_positive", "price must be a positive number"))
        }
      },
      invariants: {
        price_capped: { check: (p) => p.price <= 1_000_000, message: "price must stay at most 1,000,000" }
      },
      rest: ["list", "get", "create", "set_price"],
      mcp: ["list", "get", "set_price"]
    })
  }
})
