# dray: the two commands of the README, and a few helpers.

.PHONY: demo test build lint format deps clean

## Run the example job from nothing against the local platform emulator.
demo:
	scripts/demo.sh

## Build and run every test (what CI runs).
test: deps
	swift build --build-tests
	swift test
	swift format lint --strict -r Sources Tests Package.swift

build: deps
	swift build

lint:
	swift format lint --strict -r Sources Tests Package.swift

format:
	swift format -i -r Sources Tests Package.swift

deps:
	scripts/install-deps.sh

clean:
	rm -rf .build jobs/data jobs/reports jobs/.dray
