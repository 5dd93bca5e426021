/** Where devpivot keeps things, per user, and which cache a user's run reads besides its own. */
import test from 'ava';
import { cacheDir, SYSTEM_CACHE_DIR, sharedCacheDir, stateDir } from '../../src/core/paths.js';

const HOME = { HOME: '/home/u' };

test('root uses the system directories; a user their XDG ones', (t) => {
  t.is(cacheDir({}, 0), SYSTEM_CACHE_DIR);
  t.is(stateDir({}, 0), '/var/lib/devpivot');
  t.is(cacheDir({ XDG_CACHE_HOME: '/x/cache' }, 1000), '/x/cache/devpivot');
  t.is(stateDir({ XDG_STATE_HOME: '/x/state' }, 1000), '/x/state/devpivot');
});

test("the shared cache: root's for a user on their default cache; none for root or an explicit cache", (t) => {
  t.is(sharedCacheDir(HOME, 1000), SYSTEM_CACHE_DIR);
  t.is(sharedCacheDir({}, 0), undefined, "root's own cache is the system one");
  t.is(sharedCacheDir({ DEVPIVOT_CACHE_DIR: '/tmp/c' }, 1000), undefined, 'an explicit cache alone, as asked');
  t.is(sharedCacheDir({ DEVPIVOT_CACHE_DIR: '/tmp/c', DEVPIVOT_SHARED_CACHE_DIR: '/srv/c' }, 0), '/srv/c');
  t.is(sharedCacheDir({ DEVPIVOT_CACHE_DIR: '/srv/c', DEVPIVOT_SHARED_CACHE_DIR: '/srv/c' }, 0), undefined);
});
