// Copies each driver's numbered .sql migrations next to the compiled driver, so that
// `dist/` is self-contained and `ferry start` never reads from `src/`.
import { cpSync, existsSync } from 'node:fs';

for (const driver of ['sqlite', 'postgres']) {
  const from = `src/storage/${driver}/migrations`;
  if (existsSync(from)) cpSync(from, `dist/storage/${driver}/migrations`, { recursive: true });
}
