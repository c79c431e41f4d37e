import { h } from "vue";
import DefaultTheme from "vitepress/theme";
import type { Theme } from "vitepress";
import CapstoneSize from "./CapstoneSize.vue";
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
  enhanceApp({ app, router }) {
    // A link to a region inside a collapsed block (a carried-over region, a ::: details) opens
    // the block, so the browser lands on the code and not beside a closed box.
    if (typeof window !== "undefined") {
      const openTarget = () => {
        const id = decodeURIComponent(window.location.hash.slice(1));
        const target = id ? document.getElementById(id) : null;
        for (let node: HTMLElement | null = target; node; node = node.parentElement) if (node instanceof HTMLDetailsElement) node.open = true;
      };
      window.addEventListener("hashchange", openTarget);
      const after = router.onAfterRouteChange;
      router.onAfterRouteChange = (to) => {
        after?.(to);
        setTimeout(openTarget);
      };
    }
    app.component("StageHeader", StageHeader);
    app.component("CurriculumList", CurriculumList);
    app.component("SessionView", SessionView);
    app.component("RegionDiff", RegionDiff);
    app.component("ComparedWith", ComparedWith);
    app.component("CapstoneSize", CapstoneSize);
    app.component("StageSizes", StageSizes);
    app.component("GetTheCode", GetTheCode);
    app.component("MachineryList", MachineryList);
    app.component("WorkshopLink", WorkshopLink);
  },
} satisfies Theme;
