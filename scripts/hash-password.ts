/**
 * `npm run hash-password`: reads a password from standard input (not the command line, where it would stay in
 * the shell history) and prints the hash to put in USERS as name:role:<hash>.
 */
import { hashPassword } from "../lib/server/auth/passwords";

let input = "";
process.stdin.setEncoding("utf8");
if (process.stdin.isTTY) process.stderr.write("password: ");
process.stdin.on("data", (d: string) => (input += d));
process.stdin.on("end", () => {
  const password = input.replace(/\r?\n$/, "");
  if (password.length < 8) {
    process.stderr.write("hash-password: use at least 8 characters\n");
    process.exit(2);
  }
  void hashPassword(password).then((h) => process.stdout.write(`${h}\n`));
});
