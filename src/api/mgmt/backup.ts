/**
 * `POST /v2/admin/backup` → the SQLite database file (`ferry backup`). Administrators only: the
 * copy holds every account's messages. The server makes the copy, with SQLite's online backup
 * API on its own connection, so that the copy is consistent while deliveries go on (a file copy
 * taken from outside could catch the database between a commit and its checkpoint).
 */
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { badRequest, FerryError } from '../../core/errors.js';
import type { MgmtContext } from './context.js';

export function backupRoutes(app: FastifyInstance, ctx: MgmtContext): void {
  app.post('/v2/admin/backup', async (request, reply) => {
    if (!request.mgmtUser.admin) throw new FerryError(403, 'only administrators take backups');
    const backup = ctx.backup;
    if (!backup) {
      throw badRequest(
        'this server stores in PostgreSQL: back it up with pg_dump (see docs/operations.md)',
      );
    }
    // In the data directory: same disk as the database, so the copy fits where it does, and
    // a private directory (0700) with a private file (0600), as the copy holds every secret.
    const dir = await mkdtemp(join(backup.dataDir, '.backup-'));
    const path = join(dir, 'ferry.db');
    const cleanUp = (): void => void rm(dir, { recursive: true, force: true });
    try {
      await writeFile(path, '', { mode: 0o600 });
      const started = Date.now();
      await backup.run(path);
      const { size } = await stat(path);
      ctx.logger.info({ bytes: size, ms: Date.now() - started }, 'backup taken');
      const stream = createReadStream(path);
      stream.on('close', cleanUp);
      return reply
        .type('application/vnd.sqlite3')
        .header('content-length', size)
        .header('content-disposition', 'attachment; filename="ferry.db"')
        .send(stream);
    } catch (error) {
      cleanUp();
      throw error;
    }
  });
}
