/**
 * Errors Node's HTTP server meets before a request reaches Fastify's router (a header Node's
 * parser refuses, a request that is not received in time, a URL that is not valid
 * percent-encoding, a missing Host, an Expect other than 100-continue). Node and Fastify answer
 * these with bodies of their own shape, or none; Ferry answers `{"error": "..."}` naming the
 * problem, like every other client mistake (errors.ts), and closes the connection, since what
 * follows on it cannot be trusted to start a request.
 */
import type { Server, IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';

/** llhttp's error codes (`HPE_…`) and Node's own, with what Ferry tells the client. */
const PARSE_ERRORS: Record<string, string> = {
  HPE_INVALID_HEADER_TOKEN: 'invalid header: a header name or value has a character HTTP forbids',
  HPE_INVALID_CONTENT_LENGTH: 'invalid Content-Length header',
  HPE_UNEXPECTED_CONTENT_LENGTH:
    'Content-Length and Transfer-Encoding: chunked together: send one of them',
  HPE_INVALID_TRANSFER_ENCODING: 'invalid Transfer-Encoding header',
  HPE_INVALID_CHUNK_SIZE: 'invalid chunk size in a chunked body',
  HPE_INVALID_METHOD: 'invalid HTTP method (methods are upper case, e.g. POST)',
  HPE_INVALID_URL: 'invalid request target',
  HPE_INVALID_VERSION: 'invalid HTTP version',
  HPE_HEADER_OVERFLOW: 'request headers are too large',
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 'chunk extensions are too large',
};

/** Statuses other than 400. */
const PARSE_STATUSES: Record<string, number> = { HPE_HEADER_OVERFLOW: 431 };

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  417: 'Expectation Failed',
  431: 'Request Header Fields Too Large',
};

/** A whole HTTP/1.1 answer with a JSON error body and `Connection: close`, as raw bytes. */
function rawAnswer(status: number, error: string): string {
  const body = JSON.stringify({ error });
  return (
    `HTTP/1.1 ${status} ${REASONS[status] ?? 'Error'}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}

/** The status and error text for a `clientError`; `undefined` for a client that is gone. */
export function describeClientError(
  error: Error & { code?: string; reason?: string },
  requestTimeoutMs: number,
): { status: number; error: string } | undefined {
  const code = error.code ?? '';
  if (code === 'ECONNRESET' || code === 'EPIPE') return undefined;
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return {
      status: 408,
      error: `request not received in time: its headers and body must arrive within ${requestTimeoutMs / 1000} s (--request-timeout)`,
    };
  }
  // llhttp gives this code to Transfer-Encoding beside Content-Length too.
  if (code === 'HPE_INVALID_TRANSFER_ENCODING' && /Content-Length/i.test(error.reason ?? '')) {
    return { status: 400, error: PARSE_ERRORS.HPE_UNEXPECTED_CONTENT_LENGTH ?? '' };
  }
  const known = PARSE_ERRORS[code];
  if (known) return { status: PARSE_STATUSES[code] ?? 400, error: known };
  const reason = typeof error.reason === 'string' ? `: ${error.reason}` : '';
  return { status: 400, error: `malformed HTTP request${reason}` };
}

/**
 * Fastify's `clientErrorHandler`: answers a request Node's parser refused or timed out, unless
 * an answer to it has begun (it then ends as it is), and closes the socket.
 */
export function clientErrorHandler(
  requestTimeoutMs: number,
): (error: Error & { code?: string }, socket: Socket) => void {
  return (error, socket) => {
    if (socket.destroyed) return;
    const answer = describeClientError(error, requestTimeoutMs);
    const started = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage
      ?.headersSent;
    if (answer && socket.writable && !started) socket.end(rawAnswer(answer.status, answer.error));
    socket.destroySoon();
  };
}

/** Fastify's `frameworkErrors`: a URL that is not valid percent-encoding (`/v2/messages/%ff`). */
export function frameworkErrors(
  error: FastifyError,
  _request: FastifyRequest,
  reply: FastifyReply,
): void {
  if (error.code === 'FST_ERR_BAD_URL') {
    void reply
      .code(400)
      .send({ error: 'malformed URL: its path has an invalid percent-encoding (%XX)' });
    return;
  }
  void reply.code(400).send({ error: error.message });
}

/**
 * Node answers a request with `Expect` other than `100-continue` 417 without a body, and an
 * HTTP/1.1 request without `Host` 400 without a body; these handlers answer them in Ferry's
 * shape. The Host check is Ferry's (`requireHostHeader: false` hands it the request).
 */
export function installProtocolChecks(server: Server): void {
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const body = JSON.stringify({
      error: `unsupported Expect header ${JSON.stringify(request.headers.expect ?? '')}: only 100-continue is supported`,
    });
    response.shouldKeepAlive = false;
    response.writeHead(417, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    });
    response.end(body);
  });
}

/** Whether an HTTP/1.1 request lacks the `Host` header the protocol requires (RFC 9112, 3.2). */
export function missingHost(request: IncomingMessage): boolean {
  return (
    request.httpVersionMajor === 1 &&
    request.httpVersionMinor === 1 &&
    request.headers.host === undefined
  );
}
