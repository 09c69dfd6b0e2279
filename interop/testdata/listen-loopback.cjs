// Preloaded (node --require) into an npm HTTP server that listens on a
// fixed $PORT: it binds the first listen to 127.0.0.1 on a free port and
// prints the port it got ("LISTENING <port>") on stderr, so a test can run
// the server on loopback without choosing a port.
const http = require("node:http");
const listen = http.Server.prototype.listen;
let done = false;
http.Server.prototype.listen = function (...args) {
  if (done) return listen.apply(this, args);
  done = true;
  this.once("listening", () => process.stderr.write(`LISTENING ${this.address().port}\n`));
  const cb = args.find((a) => typeof a === "function");
  return cb ? listen.call(this, 0, "127.0.0.1", cb) : listen.call(this, 0, "127.0.0.1");
};
