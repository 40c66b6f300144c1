# For users who build with a container engine. `make image` builds the same
# image without one (hack/image): a static binary on an empty base, non-root.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY pkg/ pkg/
ARG VERSION=dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath -o /metawatch \
    -ldflags "-s -w -X github.com/metawatch/metawatch/pkg/version.version=${VERSION} -X github.com/metawatch/metawatch/pkg/version.commit=${COMMIT}" \
    ./cmd/metawatch

FROM gcr.io/distroless/static:nonroot
COPY --from=build /metawatch /metawatch
USER 65532:65532
ENTRYPOINT ["/metawatch"]
