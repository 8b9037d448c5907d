import { v7 as uuidv7 } from "uuid";

/**
 * A new event's id: a UUIDv7 (RFC 9562, from the `uuid` package), whose text sorts by creation time within this
 * process. The dashboard's store keeps events under a unique index on the id (SQLite's primary key, PostgreSQL's), so
 * ids that arrive in order append to that index instead of landing on a random page of it: at an agent's first
 * contact with 100,000 locks, inserting 250 events with random (v4) ids took 21.8 ms a transaction on SQLite, with
 * time-ordered ids 11.9 ms (a scratch on a real file, same schema and rows). Ids stay unique across agents (74
 * random bits beside the millisecond); nothing reads the time back out of them.
 */
export function newEventId(): string {
  return uuidv7();
}
