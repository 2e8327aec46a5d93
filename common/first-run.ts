/**
 * The first run's shapes, under the names the renderer's guide imports (they are defined in contract.ts
 * with the rest of the console's answers). Imports nothing outside this folder.
 */
export type {
  CliSignInStep,
  ConnectionTest,
  FirstRunStep,
  FirstRunView,
  GithubConnectionStep,
  GithubConnectionStep as GithubStep,
  HubCredentialStep,
  TerminalOpened,
  TokenPermission,
} from './contract.ts';
export { FIRST_RUN_STEPS, type FirstRunStepId } from './needs.ts';
