# Evaluates the Vagrantfile against a recording stand-in for Vagrant's config
# objects and prints every call as JSON lines: what `vagrant up` would be told,
# read without Vagrant, a box or a hypervisor. Used by test_vagrantfile.py.
require "json"
require "rbconfig"

class Recorder
  def initialize(path, calls)
    @path = path
    @calls = calls
  end

  def [](key)
    Recorder.new("#{@path}[#{key.inspect}]", @calls)
  end

  def []=(key, value)
    @calls << { "path" => "#{@path}[#{key.inspect}]=", "args" => [value] }
  end

  def respond_to_missing?(_name, _include_private = false)
    true
  end

  def method_missing(name, *args, **kwargs, &block)
    path = "#{@path}.#{name}"
    @calls << { "path" => path, "args" => args, "kwargs" => kwargs }
    if block
      children = Array.new([block.arity, 1].max) { |i| Recorder.new("#{path}(#{args.first})[#{i}]", @calls) }
      block.call(*children)
    end
    Recorder.new(path, @calls)
  end
end

module Vagrant
  VERSION = ENV.fetch("FAKE_VAGRANT_VERSION", "2.4.1")
  CALLS = []
  def self.configure(_version)
    yield Recorder.new("config", CALLS)
  end
end

load ARGV.fetch(0)
Vagrant::CALLS.each { |call| puts JSON.generate(call) }
