import { h } from "vue";
import DefaultTheme from "vitepress/theme";
import type { Theme } from "vitepress";
import ComparedWith from "./ComparedWith.vue";
import CurriculumList from "./CurriculumList.vue";
import GetTheCode from "./GetTheCode.vue";
import MachineryList from "./MachineryList.vue";
import RegionDiff from "./RegionDiff.vue";
import SessionView from "./SessionView.vue";
import StageFooter from "./StageFooter.vue";
import StageHeader from "./StageHeader.vue";
import StageSizes from "./StageSizes.vue";
import WorkshopLink from "./WorkshopLink.vue";
import "./custom.css";

export default {
  extends: DefaultTheme,
  // Every stage page, planned page and diff page ends with where to go next.
  Layout: () => h(DefaultTheme.Layout, null, { "doc-footer-before": () => h(StageFooter) }),
  enhanceApp({ app }) {
    app.component("StageHeader", StageHeader);
    app.component("CurriculumList", CurriculumList);
    app.component("SessionView", SessionView);
    app.component("RegionDiff", RegionDiff);
    app.component("ComparedWith", ComparedWith);
    app.component("StageSizes", StageSizes);
    app.component("GetTheCode", GetTheCode);
    app.component("MachineryList", MachineryList);
    app.component("WorkshopLink", WorkshopLink);
  },
} satisfies Theme;
