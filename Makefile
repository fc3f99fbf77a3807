# dray: the two commands of the README, and a few helpers.

.PHONY: demo test test-deploy release build lint format deps clean

## Run the example job from nothing against the local platform emulator.
demo:
	scripts/demo.sh

## Build and run every test (what CI runs): the Swift tests, the format check, and the
## deployment checks against the release tarball (deploy/tests/run.sh).
test: deps
	swift build --build-tests
	swift test
	swift format lint --strict -r Sources Tests Package.swift
	deploy/tests/run.sh

## The deployment checks alone (builds the release tarball first).
test-deploy: deps
	deploy/tests/run.sh

## dist/dray-<version>-linux-<arch>.tar.gz, its .sha256 and the stripped binary's .debug
## symbols (scripts/release.sh).
release: deps
	scripts/release.sh

build: deps
	swift build

lint:
	swift format lint --strict -r Sources Tests Package.swift

format:
	swift format -i -r Sources Tests Package.swift

deps:
	scripts/install-deps.sh

clean:
	rm -rf .build dist jobs/data jobs/reports jobs/.dray
