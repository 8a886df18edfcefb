/** examples/library without any view: the floor bench/scenarios/keyed-views.ts holds a keyed view's CPU per lend to. */
import { defineApp } from "writeonce"
import library from "../../../examples/library/app.ts"

export default defineApp({
  name: "library",
  description: library.description,
  entities: library.entities,
  commands: library.commands
})
