import { describe, expect, it } from "vitest";
import { describeConnectError } from "../../agent/transport/dashboard-link";

const err = (message: string, description?: unknown) => Object.assign(new Error(message), { description });

describe("the agent's connection error line", () => {
  it("adds the transport's detail that socket.io-client keeps in `description`", () => {
    // What a refused websocket upgrade looks like: ws's ErrorEvent carries the HTTP status.
    expect(describeConnectError(err("websocket error", { message: "Unexpected server response: 400" }))).toBe(
      "websocket error (Unexpected server response: 400)",
    );
    expect(
      describeConnectError(err("websocket error", { error: { message: "connect ECONNREFUSED 127.0.0.1:1" } })),
    ).toBe("websocket error (connect ECONNREFUSED 127.0.0.1:1)");
    expect(describeConnectError(err("xhr poll error", "timeout"))).toBe("xhr poll error (timeout)");
  });

  it("says only the message when there is nothing more, or nothing new", () => {
    expect(describeConnectError(err("unauthorised: wrong or missing agent token"))).toBe(
      "unauthorised: wrong or missing agent token",
    );
    expect(describeConnectError(err("timeout", { message: "timeout" }))).toBe("timeout");
    expect(describeConnectError(err("websocket error", { message: 42 }))).toBe("websocket error");
  });
});
