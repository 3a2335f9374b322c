/**
 * Where `credentials.json` lives and what it holds. Apart from credentials.ts (which creates it
 * and needs the storage code) so that the client commands read it without loading the server.
 */
import { join } from 'node:path';

export interface Credentials {
  baseUrl: string;
  token: string;
  currentSigningKey: string;
  nextSigningKey: string;
  accountId: string;
  /** The management API's URL (the base URL unless `--mgmt-port` gives it a port of its own). */
  mgmtUrl: string;
  /** The administrator's e-mail and API key: `Authorization: Basic base64(email:apiKey)`. */
  email: string;
  apiKey: string;
}

export const credentialsPath = (dataDir: string): string => join(dataDir, 'credentials.json');
