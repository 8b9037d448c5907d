/**
 * The `lockscope` program: wires the process's terminal to run() (cli/main.ts). Bundled to dist/lockscope.mjs by
 * `npm run build`; cli/bin.mjs (the package's bin) runs that, or this file through tsx before a build.
 */
import { createInterface } from "node:readline";
import { run, type Terminal } from "./main";

const terminal: Terminal = {
  out: (s) => void process.stdout.write(s),
  err: (s) => void process.stderr.write(s),
  interactive: Boolean(process.stdin.isTTY && process.stderr.isTTY),
  ask: (question) =>
    new Promise((resolve) => {
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      rl.question(question, (answer) => {
        rl.close();
        resolve(answer);
      });
    }),
};

void run(process.argv.slice(2), process.env, terminal).then((code) => {
  // exitCode, not exit(): stdout may still be flushing into a pipe (`lockscope locks --json | jq`).
  process.exitCode = code;
});
