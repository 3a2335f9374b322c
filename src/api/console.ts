/**
 * Serves the web console (`console/` at the repository root, built by `npm run build` into
 * `dist/console/`) at `/console` on the main port (and on
 * the management port with `--mgmt-port`). The console is a client of the public HTTP
 * API only; this file just hands out its files.
 *
 * Hashed assets (`/console/assets/<name>-<hash>.js`) never change under a name, so they are cached
 * for a year; `index.html` is revalidated on every load so a new build shows at once. Every
 * console path that is not an asset answers `index.html` (the console routes in the browser),
 * so deep links and reloads work.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';

/**
 * Nothing runs but the console's own bundle: no inline script, no other host (no CDN, fonts or
 * telemetry), no framing. Message data shown by the console is text, never markup; this policy
 * is the second line of defence if that ever slips.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** `dist/console/` from the built server (`dist/api/`) and from the sources (`src/api/`, tests). */
function consoleDir(): string | undefined {
  const candidates = ['../console/', '../../dist/console/'].map((p) =>
    fileURLToPath(new URL(p, import.meta.url)),
  );
  return candidates.find((dir) => existsSync(`${dir}index.html`));
}

function secure(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY');
}

/** What the console needs to know about this server that the API does not say. */
export interface ConsoleSettings {
  /** Header prefix (`Svc`): the console builds publish and schedule headers with it. */
  headerPrefix: string;
  /** This server serves the messaging API (token sign-in). */
  messaging: boolean;
  /** This server serves the management API (e-mail and API key sign-in). */
  management: boolean;
}

/** Registers `/console` and everything under it. */
export function registerConsole(app: FastifyInstance, settings: ConsoleSettings): void {
  const root = consoleDir();
  if (!root) {
    app.get('/console', (_request, reply) =>
      reply
        .code(503)
        .send({ error: 'the console is not built: run `npm run build` (or start with npm start)' }),
    );
    return;
  }
  void app.register(fastifyStatic, {
    root: `${root}assets`,
    prefix: '/console/assets/',
    index: false,
    // One route per built file (the set is fixed by the build), so an unknown asset is a 404.
    wildcard: false,
    immutable: true,
    maxAge: '365d',
    setHeaders: (res) => {
      res.setHeader('x-content-type-options', 'nosniff');
    },
  });
  const page = (_request: unknown, reply: FastifyReply): FastifyReply =>
    secure(reply)
      .header('cache-control', 'no-cache')
      .sendFile('index.html', root, { cacheControl: false });
  app.get('/console/settings.json', (_request, reply) =>
    secure(reply).header('cache-control', 'no-cache').send(settings),
  );
  // An asset name that is not in this build (an old hash) is not the page.
  app.get('/console/assets/*', (request, reply) =>
    reply.code(404).send({ error: `no console asset ${request.url.split('?')[0] ?? ''}` }),
  );
  app.get('/console', page);
  app.get('/console/', page);
  app.get('/console/*', page);
}
