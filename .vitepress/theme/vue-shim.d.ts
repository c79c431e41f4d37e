// .vue files are compiled by VitePress; for `tsc --noEmit` they are plain components.
declare module "*.vue" {
  import type { DefineComponent } from "vue";
  const component: DefineComponent;
  export default component;
}
