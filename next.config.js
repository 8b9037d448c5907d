/** @type {import('next').NextConfig} */
const nextConfig = {
  // The dashboard is served by lib/server/main.ts (custom server with socket.io); Next renders the pages only.
  reactStrictMode: true,
  poweredByHeader: false,
  // Never let a stray lint error or type error hide behind the build: `npm test` runs both explicitly.
  typescript: { ignoreBuildErrors: false },
};

export default nextConfig;
