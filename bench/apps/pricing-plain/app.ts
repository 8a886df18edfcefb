/** bench/apps/pricing-invariant without its invariant: the other side of bench/scenarios/invariant.ts. */
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
      rest: ["list", "get", "create", "set_price"],
      mcp: ["list", "get", "set_price"]
    })
  }
})
