/** The live-pricing sample: products whose price agents change through `set_price`, and a view of the catalogue by currency. */
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
          apply: (_row, { price }) => (price > 0 ? { price } : reject("not_positive", "price must be a positive number"))
        }
      },
      rest: ["list", "get", "create", "set_price"],
      mcp: ["list", "get", "set_price"]
    })
  },
  // A function of `view`: each view's `on` is checked against the entities, and `evolve` sees typed rows.
  views: (view) => ({
    // How the catalogue splits by currency. Prices move all the time; this only moves when products come and go.
    products_by_currency: view({
      description: "How many products are priced in each currency.",
      schema: Schema.Struct({ USD: Schema.Int, EUR: Schema.Int }),
      initial: { USD: 0, EUR: 0 },
      on: { products: ["created", "updated", "deleted"] },
      evolve: (counts, { before, after }) => {
        const next = { ...counts }
        if (before !== null) next[before.currency as "USD" | "EUR"] -= 1
        if (after !== null) next[after.currency as "USD" | "EUR"] += 1
        return next
      }
    })
  })
})
