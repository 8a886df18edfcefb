/** The commands the writer's unit tests send to examples/pricing's products. */
import type { Command } from "../../src/commands/commands.ts"

export const create = (name: string, price = 1): Command => ({ _tag: "Create", type: "products", input: { name, price, currency: "USD" } })

export const setPrice = (id: string, price: number, expectedVersion?: number): Command => ({
  _tag: "Invoke",
  type: "products",
  id,
  method: "set_price",
  input: { price },
  ...(expectedVersion === undefined ? {} : { expectedVersion })
})
