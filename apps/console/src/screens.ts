/**
 * The console's screens, in one registry: the shell (shell.tsx) routes `/project/<id>/<path>` to the first
 * screen whose `path` matches (so fixed paths come before `:name` ones), shows the `nav` ones in the navigation
 * bar in this order, and titles the page.
 * A new screen is a component (screens/*.tsx) and one entry here.
 */
import type { ComponentType } from 'preact';
import type { ScreenProps } from './screen-props';
import { DashboardScreen } from './screens/dashboard';
import { Dashboards } from './screens/dashboards';
import { Events } from './screens/events';
import { FeatureFlagScreen } from './screens/feature-flag';
import { FeatureFlags } from './screens/feature-flags';
import { Cohorts, EarlyAccessFeatures, Surveys } from './screens/flag-lists';
import { FunnelCorrelation } from './screens/funnel-correlation';
import { FunnelEditorScreen } from './screens/funnel-editor';
import { InsightEditor } from './screens/insight-editor';
import { InsightList } from './screens/insight-list';
import { LlmAnalytics } from './screens/llm-analytics';
import { Logs } from './screens/logs';
import { Overview } from './screens/overview';
import { PathsEditorScreen } from './screens/paths-editor';
import { PersonScreen } from './screens/person';
import { Persons } from './screens/persons';
import { PlaylistScreen } from './screens/playlist';
import { Playlists } from './screens/playlists';
import { Recordings } from './screens/recordings';
import { RetentionEditorScreen } from './screens/retention-editor';
import { Settings } from './screens/settings';
import { SqlEditorScreen } from './screens/sql-editor';
import { SurveyResultsScreen } from './screens/survey-results';
import { WebAnalytics } from './screens/web-analytics';

export interface Screen {
  /** Under `/project/<id>/`: `''` is the project's landing screen; `:name` matches one segment. */
  path: string;
  title: string;
  /** Shown in the navigation bar, labelled with the title (and marked current on its sub-paths too). */
  nav?: boolean;
  component: ComponentType<ScreenProps>;
}

export const screens: Screen[] = [
  { path: '', title: 'Overview', nav: true, component: Overview },
  { path: 'web', title: 'Web analytics', nav: true, component: WebAnalytics },
  { path: 'insights', title: 'Insights', nav: true, component: InsightList },
  { path: 'insights/new', title: 'New insight', component: InsightEditor },
  { path: 'insights/correlation', title: 'Funnel correlation', component: FunnelCorrelation },
  { path: 'insights/funnel', title: 'New funnel', component: FunnelEditorScreen },
  { path: 'insights/retention', title: 'New retention', component: RetentionEditorScreen },
  { path: 'insights/paths', title: 'New paths', component: PathsEditorScreen },
  { path: 'insights/sql', title: 'SQL', component: SqlEditorScreen },
  { path: 'insights/:shortId', title: 'Insight', component: InsightEditor },
  { path: 'dashboards', title: 'Dashboards', nav: true, component: Dashboards },
  { path: 'dashboards/:id', title: 'Dashboard', component: DashboardScreen },
  { path: 'persons', title: 'Persons', nav: true, component: Persons },
  { path: 'persons/:id', title: 'Person', component: PersonScreen },
  { path: 'events', title: 'Events', nav: true, component: Events },
  { path: 'feature_flags', title: 'Feature flags', nav: true, component: FeatureFlags },
  { path: 'feature_flags/new', title: 'New feature flag', component: FeatureFlagScreen },
  { path: 'feature_flags/cohorts', title: 'Cohorts', component: Cohorts },
  { path: 'feature_flags/early_access', title: 'Early access features', component: EarlyAccessFeatures },
  { path: 'feature_flags/surveys', title: 'Surveys', component: Surveys },
  { path: 'feature_flags/surveys/:id', title: 'Survey results', component: SurveyResultsScreen },
  { path: 'feature_flags/:id', title: 'Feature flag', component: FeatureFlagScreen },
  { path: 'recordings', title: 'Recordings', nav: true, component: Recordings },
  { path: 'recordings/playlists', title: 'Playlists', component: Playlists },
  { path: 'recordings/playlists/:shortId', title: 'Playlist', component: PlaylistScreen },
  { path: 'logs', title: 'Logs', nav: true, component: Logs },
  { path: 'llm-analytics', title: 'LLM analytics', nav: true, component: LlmAnalytics },
  { path: 'settings', title: 'Settings', nav: true, component: Settings },
];
