import { type RequestContext, sendJson } from './context.js';
import { paginate } from './paginate.js';

/** `GET /v2/_catalog`: every repository name, paginated like tags. */
export async function handleCatalog(ctx: RequestContext): Promise<void> {
  const { page, headers } = paginate(ctx, await ctx.repositories.listRepositories(), '/v2/_catalog');
  sendJson(ctx, 200, { repositories: page }, headers);
}
