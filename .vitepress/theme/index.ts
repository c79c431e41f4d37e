import DefaultTheme from "vitepress/theme";
import type { Theme } from "vitepress";
import StageHeader from "./StageHeader.vue";
import CurriculumList from "./CurriculumList.vue";
import "./custom.css";

export default {
  extends: DefaultTheme,
  enhanceApp({ app }) {
    app.component("StageHeader", StageHeader);
    app.component("CurriculumList", CurriculumList);
  },
} satisfies Theme;
