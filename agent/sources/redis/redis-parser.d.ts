/** The parts of redis-parser 3 (the RESP2 reply parser ioredis itself uses) that lean-connection.ts calls. */
declare module "redis-parser" {
  interface ParserOptions {
    returnReply: (reply: unknown) => void;
    returnError: (err: Error) => void;
    returnFatalError: (err: Error) => void;
    returnBuffers?: boolean;
    stringNumbers?: boolean;
  }
  class RedisParser {
    constructor(options: ParserOptions);
    execute(data: Buffer): void;
    reset(): void;
  }
  export = RedisParser;
}
