import type { RequestContext } from './context.js';
import { sendJson } from './context.js';

/** `GET /v2/` (spec "Determining support"): 200 with an empty JSON object means "this is a v2 registry". */
export async function handleApiVersion(ctx: RequestContext): Promise<void> {
  sendJson(ctx, 200, {});
}
