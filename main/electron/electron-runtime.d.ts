/**
 * Members Electron has at run time that its type declarations leave out, merged into its own global
 * namespace (this file is types only: nothing of it is built).
 */
declare namespace Electron {
  interface WebContents {
    /** The options the page really runs with (the test hooks report them). */
    getLastWebPreferences(): WebPreferences | null;
  }
}
