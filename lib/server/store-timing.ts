import type { HistoryStore } from "./store";

/**
 * The store with the duration of each saveEvents reported (to the Prometheus histogram): the time an agent waits
 * for its acknowledgement is mostly this, so it is what to watch when many agents feed one dashboard.
 */
export function withWriteTiming(
  store: HistoryStore,
  observe: (seconds: number, events: number) => void,
  now: () => number = () => performance.now(),
): HistoryStore {
  return {
    ...store,
    async saveEvents(events) {
      const started = now();
      try {
        return await store.saveEvents(events);
      } finally {
        if (events.length > 0) observe((now() - started) / 1000, events.length);
      }
    },
  };
}
