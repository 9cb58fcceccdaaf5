# The kcp-ts image: the operator (`kcp-ts operator`), the shards (`kcp-ts start`) and the
# front-proxy (`kcp-ts front-proxy`) all run it. The operator's Deployments set `command: [kcp-ts]`.
#   docker build -t ghcr.io/kcp-ts/kcp-ts:0.1.0 .
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY operator ./operator
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
# redis-server for `kcp-ts start` without --redis-url (local use); the operator's shards use
# their provisioned or external Redis.
RUN apt-get update && apt-get install -y --no-install-recommends redis-server && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY bin ./bin
RUN ln -s /app/bin/kcp-ts /usr/local/bin/kcp-ts && ln -s /app/bin/kubectl-ws /usr/local/bin/kubectl-ws \
 && ln -s /app/bin/kubectl-create-workspace /usr/local/bin/kubectl-create-workspace
USER 65532:65532
ENV NODE_ENV=production
EXPOSE 6443
ENTRYPOINT ["kcp-ts"]
CMD ["--help"]
