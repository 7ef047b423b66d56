import fs from 'node:fs';
import express, { type Router } from 'express';

/** The stylesheet, the copy button's script and the icon, read once at start and served as files (CSP: 'self'). */
const ASSETS: Record<string, string> = {
  'dashboard.css': 'text/css; charset=utf-8',
  'copy.js': 'text/javascript; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
};

export const dashboardAssets = (): Router => {
  const router = express.Router();
  for (const [name, type] of Object.entries(ASSETS)) {
    const body = fs.readFileSync(new URL(`./assets/${name}`, import.meta.url));
    router.get(`/${name}`, (_req, res) => {
      res.set({ 'Content-Type': type, 'Cache-Control': 'no-cache' }).send(body);
    });
  }
  return router;
};
