import { afterEach, describe, expect, it } from 'vitest';
import { homeRoute, parseRoute } from '../src/route';
import { userSettings } from '../src/store';

afterEach(() => {
  userSettings.value = {};
});

describe('the home view', () => {
  it.each([
    [undefined, { view: 'inbox' }],
    ['inbox', { view: 'inbox' }],
    ['recent_topics', { view: 'recent' }],
    ['all_messages', { view: 'narrow', narrow: [] }],
    ['something_new', { view: 'inbox' }],
  ])('web_home_view %s opens %o', (setting, want) => {
    userSettings.value = setting === undefined ? {} : { web_home_view: setting };
    expect(homeRoute()).toEqual(want);
    expect(parseRoute('')).toEqual(want);
    expect(parseRoute('#')).toEqual(want);
    expect(parseRoute('#no-such-view')).toEqual(want);
  });

  it('is not what the named views open', () => {
    userSettings.value = { web_home_view: 'recent_topics' };
    expect(parseRoute('#inbox')).toEqual({ view: 'inbox' });
    expect(parseRoute('#feed')).toEqual({ view: 'narrow', narrow: [] });
    userSettings.value = { web_home_view: 'all_messages' };
    expect(parseRoute('#recent')).toEqual({ view: 'recent' });
  });

  it('is under an overlay opened first', () => {
    userSettings.value = { web_home_view: 'recent_topics' };
    expect(parseRoute('#settings/preferences')).toEqual({ view: 'overlay', overlay: 'settings', under: { view: 'recent' }, args: ['preferences'] });
  });
});
