/**
 * bench/apps/pricing-plain with secondary indexes on disk declared: the other side of the index-cost
 * measure in bench/scenarios/scale.ts. `set_price` moves the price and the (currency, price) records of its row.
 */
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
      indexes: ["name", "price", ["currency", "price"]],
      rest: ["list", "get", "create", "set_price"],
      mcp: ["list", "get", "set_price"]
    })
  }
})
