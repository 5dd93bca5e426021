/**
 * The route table of the distribution API: a predicate on the raw path per resource, and a handler per
 * method (routing by predicate, as go-containerregistry's pkg/registry/registry.go @130a80c does with isBlob,
 * isManifest, isTags...). Names come from the raw (undecoded) path, so escapes never pass the name grammar.
 */
import { isRepositoryName } from '../oci/names.js';
import { RegistryError, unsupported } from './errors.js';
import { handleApiVersion } from './handlers/base.js';
import { handleBlobDelete, handleBlobGet } from './handlers/blobs.js';
import { handleCatalog } from './handlers/catalog.js';
import type { Handler, RequestContext } from './handlers/context.js';
import { handleManifestDelete, handleManifestGet, handleManifestPut } from './handlers/manifests.js';
import { handleReferrersList } from './handlers/referrers.js';
import { handleTagsList } from './handlers/tags.js';
import {
  handleUploadCancel,
  handleUploadPatch,
  handleUploadPut,
  handleUploadStart,
  handleUploadStatus,
} from './handlers/uploads.js';

interface Route {
  /** The raw repository name and reference the path names, or undefined when this route does not apply. */
  match(path: string): { name: string; ref: string } | undefined;
  /** Repository routes check the name and decode the reference before any handler runs. */
  repository: boolean;
  methods: Partial<Record<string, Handler>>;
  /** HEAD is answered by the GET handler when there is no HEAD one (default). */
  headAsGet?: false;
  /** The message of the 405 for other methods. */
  refusal?: string;
}

const exactly =
  (...paths: string[]) =>
  (path: string) =>
    paths.includes(path) ? { name: '', ref: '' } : undefined;

/** `/v2/<name>/<suffix>`: group 1 is the name, group 2 (if any) the reference. */
const underRepository = (re: RegExp) => (path: string) => {
  const match = re.exec(path);
  return match ? { name: match[1]!, ref: match[2] ?? '' } : undefined;
};

// Order matters: names may themselves contain "blobs" or "manifests" components, so suffixes are matched last.
const ROUTES: Route[] = [
  {
    match: exactly('/v2', '/v2/'),
    repository: false,
    methods: { GET: handleApiVersion, HEAD: handleApiVersion },
    refusal: 'only GET and HEAD on /v2/',
  },
  {
    match: exactly('/v2/_catalog'),
    repository: false,
    methods: { GET: handleCatalog },
    headAsGet: false,
    refusal: 'only GET on /v2/_catalog',
  },
  { match: underRepository(/^\/v2\/(.+)\/blobs\/uploads\/?$/), repository: true, methods: { POST: handleUploadStart } },
  {
    match: underRepository(/^\/v2\/(.+)\/blobs\/uploads\/([^/]+)$/),
    repository: true,
    methods: { PATCH: handleUploadPatch, PUT: handleUploadPut, GET: handleUploadStatus, DELETE: handleUploadCancel },
  },
  {
    match: underRepository(/^\/v2\/(.+)\/blobs\/([^/]+)$/),
    repository: true,
    methods: { GET: handleBlobGet, DELETE: handleBlobDelete },
  },
  {
    match: underRepository(/^\/v2\/(.+)\/manifests\/([^/]+)$/),
    repository: true,
    methods: { GET: handleManifestGet, PUT: handleManifestPut, DELETE: handleManifestDelete },
  },
  { match: underRepository(/^\/v2\/(.+)\/tags\/list$/), repository: true, methods: { GET: handleTagsList } },
  {
    match: underRepository(/^\/v2\/(.+)\/referrers\/([^/]+)$/),
    repository: true,
    methods: { GET: handleReferrersList },
  },
];

/** Find the route and handler for the request and run it; every failure is a RegistryError (or a crash). */
export async function dispatch(ctx: RequestContext): Promise<void> {
  const rawUrl = ctx.req.url ?? '/';
  const q = rawUrl.indexOf('?');
  const path = q < 0 ? rawUrl : rawUrl.slice(0, q);
  ctx.query = new URLSearchParams(q < 0 ? '' : rawUrl.slice(q + 1));
  for (const route of ROUTES) {
    const match = route.match(path);
    if (!match) continue;
    let { name, ref } = match;
    if (route.repository) {
      if (!isRepositoryName(name))
        throw new RegistryError(400, 'NAME_INVALID', `invalid repository name '${name}'`, { name });
      try {
        ref = decodeURIComponent(ref);
      } catch {
        throw new RegistryError(400, 'UNSUPPORTED', `malformed reference '${ref}'`);
      }
    }
    const method = ctx.req.method ?? 'GET';
    const handler =
      route.methods[method] ?? (method === 'HEAD' && route.headAsGet !== false ? route.methods.GET : undefined);
    if (!handler) throw unsupported(route.refusal ?? `method ${ctx.req.method} not allowed here`);
    return handler(ctx, name, ref);
  }
  throw new RegistryError(404, 'UNSUPPORTED', `no such endpoint: ${ctx.req.method} ${path}`);
}
