/**
 * The library sample (examples/library) with members that can be deleted over REST: what the reference tests race
 * (a member deleted while a book is lent to it) and plant (a loan left pointing at a deleted member).
 */
import library from "../examples/library/app.ts"

const members = library.entities.members

export default {
  ...library,
  entities: { ...library.entities, members: { ...members, rest: [...(members.rest ?? []), "delete"] } }
} as typeof library
