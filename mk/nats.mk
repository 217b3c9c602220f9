# Real nats-server for tests, built from the Go module this repo requires
# and cached under .cache/nats/<version> (internal/natstest also builds it on
# demand; building it first keeps parallel test packages from waiting).
NATS_SERVER_VERSION := $(shell $(GO) list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2 2>/dev/null | sed 's/^v//')
.PHONY: nats-assets
nats-assets:
	@test -x .cache/nats/$(NATS_SERVER_VERSION)/nats-server || { mkdir -p .cache/nats/$(NATS_SERVER_VERSION) && \
		CGO_ENABLED=0 $(GO) build -trimpath -o .cache/nats/$(NATS_SERVER_VERSION)/nats-server github.com/nats-io/nats-server/v2; }
