/** The live-pricing sample: products whose price agents change through `set_price`. */
import { Schema } from "effect"
import { defineApp, entity, reject } from "writeonce"

const Price = Schema.Number.pipe(Schema.positive({ message: () => "price must be a positive number" }))

export default defineApp({
  name: "pricing",
  description: "A product catalogue with live prices.",
  entities: {
    products: entity({
      description: "A product for sale.",
      fields: {
        name: Schema.String.pipe(Schema.minLength(1)),
        price: Price,
        currency: Schema.Literal("USD", "EUR")
      },
      methods: {
        set_price: {
          description: "Change the product's price.",
          params: { price: Schema.Number },
          apply: (_row, { price }) => (price > 0 ? { price } : reject("price must be a positive number"))
        }
      },
      rest: ["list", "get", "create", "set_price"],
      mcp: ["list", "get", "set_price"]
    })
  }
})
