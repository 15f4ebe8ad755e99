require "json"

class Greeter
  def greet(name)
    "Hello, #{name}"
  end
end

def helper
  1
end
