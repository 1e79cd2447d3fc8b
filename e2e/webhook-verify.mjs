// Verifies and signs Standard Webhooks messages with the npm
// standardwebhooks package, an implementation independent of ours, for
// shortener/webhook's TestStandardWebhooksInterop. It reads a JSON array
// of cases on stdin and prints a JSON array of results on stdout, in
// order:
//   {"op": "verify", "secret": "whsec_…", "headers": {...}, "body": "<base64>"}
//     → {"ok": true} or {"ok": false, "error": "…"}
//   {"op": "sign", "secret": "whsec_…", "id": "msg_…", "timestamp": <unix seconds>, "body": "<base64>"}
//     → {"ok": true, "signature": "v1,…"}
import { Webhook } from 'standardwebhooks';

function run(c) {
  try {
    const wh = new Webhook(c.secret);
    const body = Buffer.from(c.body, 'base64');
    if (c.op === 'sign') {
      return { ok: true, signature: wh.sign(c.id, new Date(c.timestamp * 1000), body) };
    }
    wh.verify(body, c.headers, { jsonParse: false });
    return { ok: true };
  } catch (e) {
    return { ok: false, error: String(e && e.message ? e.message : e) };
  }
}

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const cases = JSON.parse(Buffer.concat(chunks).toString('utf8'));
process.stdout.write(JSON.stringify(cases.map(run)) + '\n');
