# Dockerfile -- arkbench for clusters (Slurm, Kubernetes): a Debian 12
# image holding the .deb that CPack makes, and nothing else of ours.
#
#   docker build -t arkbench .
#   docker run --rm -v "$PWD/results:/work/results" arkbench \
#     arkbench run /usr/share/arkbench/scenarios/tcp.lua --quick
#
# Stage "build" installs packages.txt's [build] section (read from the
# file, as bin/arkbench does) and the packaging tools of its [test]
# section, then builds the host and the man page and runs cpack.  The
# runtime stage installs only that .deb: apt resolves its Depends, the
# runtime libraries dpkg-shlibdeps found the binary linked against, and
# its Recommends.
# spec/unit/dockerfile_spec.lua checks both package lists against
# packages.txt; spec/integration/install_spec.lua checks the .deb's
# Depends against the [build] section (docs/install.md).

FROM debian:12 AS build
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src
COPY packages.txt ./
RUN apt-get update \
 && sed -n -e '/^\[build\]/,/^\[/{' -e 's/#.*//' -e '/^[[:space:]]*\[/d' -e 's/[[:space:]]//g' -e '/^$/d' -e p -e '}' packages.txt >/tmp/build-packages \
 && xargs -a /tmp/build-packages apt-get install -y --no-install-recommends dpkg-dev file git \
 && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
 && cmake --build build -j"$(nproc)" \
 && cd build && cpack -G DEB

FROM debian:12-slim
ENV DEBIAN_FRONTEND=noninteractive
COPY --from=build /src/build/arkbench_*.deb /tmp/
# with its Recommends (ca-certificates: the trust store https/wss/tls
# clients verify servers against)
RUN apt-get update \
 && apt-get install -y /tmp/arkbench_*.deb \
 && rm -rf /var/lib/apt/lists/* /tmp/arkbench_*.deb
# results go under the current folder: mount a volume here
WORKDIR /work
CMD ["arkbench", "help"]
