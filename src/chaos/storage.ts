/**
 * Where a chaos case's nodes keep their data: SQLite in each node's data directory, or
 * PostgreSQL on a schema of the run's own, dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';

/** Where a chaos case's nodes keep their data. */
export interface ChaosStorage {
  /** The nodes' flags: PostgreSQL's server, a schema of this run and a secret key; none for SQLite. */
  args: string[];
  /** PostgreSQL: the server and the run's schema (what the probes measure). */
  postgres?: { url: string; schema: string };
  /** Drops the run's schema (PostgreSQL); nothing for SQLite (the case removes its directory). */
  drop(): Promise<void>;
}

/**
 * SQLite in the node's data directory, or PostgreSQL on a fresh schema of `databaseUrl` with a
 * secret key (required with PostgreSQL, the same for every node of the run).
 */
export function chaosStorage(storage: 'sqlite' | 'postgres', databaseUrl?: string): ChaosStorage {
  if (storage === 'sqlite') return { args: [], drop: () => Promise.resolve() };
  if (!databaseUrl) throw new Error('the PostgreSQL case needs a database URL');
  const schema = `ferry_chaos_${randomBytes(5).toString('hex')}`;
  const secretKey = randomBytes(32).toString('base64');
  return {
    args: ['--database-url', databaseUrl, '--database-schema', schema, '--secret-key', secretKey],
    postgres: { url: databaseUrl, schema },
    async drop() {
      const sql = postgres(databaseUrl, { onnotice: () => undefined, max: 1 });
      await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await sql.end();
    },
  };
}
