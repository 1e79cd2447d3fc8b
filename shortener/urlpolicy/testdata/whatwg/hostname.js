// hostname.js: the oracle of host_test.go and host_fuzz_test.go.
// Reads one JSON string per line on stdin (a URL) and answers one JSON
// object per line on stdout: {"ok":true,"hostname":...,"href":...} as
// Node's WHATWG URL parser reads it, or {"ok":false,"error":...}.
'use strict';
const readline = require('readline');
const rl = readline.createInterface({ input: process.stdin, terminal: false });
rl.on('line', (line) => {
  let answer;
  try {
    const u = new URL(JSON.parse(line));
    answer = { ok: true, hostname: u.hostname, href: u.href };
  } catch (e) {
    answer = { ok: false, error: String(e && e.message) };
  }
  process.stdout.write(JSON.stringify(answer) + '\n');
});
