// A small token-adding proxy for loanhost's conformance runs: the MCP conformance suite sends
// no token, so this forwards every request to TARGET (loanhost's origin) with
// `Authorization: Bearer TOKEN` added, and passes method, path, headers, body, status and
// response headers through unchanged. Listens on loopback (port PORT, or any), prints
// {"url": "http://127.0.0.1:PORT"} on its first line, and serves until stdin closes.
import http from "node:http";

const target = new URL(process.env.TARGET);
const token = process.env.TOKEN;
const server = http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  delete headers["connection"];
  const upstream = http.request(
    { host: target.hostname, port: target.port, path: req.url, method: req.method, headers },
    (up) => {
      res.writeHead(up.statusCode, up.rawHeaders);
      up.pipe(res);
    },
  );
  upstream.on("error", (e) => {
    res.writeHead(502, { "content-type": "text/plain" });
    res.end(`token proxy: ${e.message}`);
  });
  req.pipe(upstream);
});
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  console.log(JSON.stringify({ url: `http://127.0.0.1:${server.address().port}` }));
});
process.stdin.resume();
process.stdin.on("end", () => server.close(() => process.exit(0)));
