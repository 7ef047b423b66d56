/** The webhook bench's receiver (a child process): answers every POST with 204. PORT, HOST from the environment. */
import http from 'node:http';

http
  .createServer((req, res) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  })
  .listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
