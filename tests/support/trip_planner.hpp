// The values of the trip-planning agents of the agent tests (scripted, over HTTP, and the
// GoogleTest helpers): a trip in, advice out, and the arguments and results of the get_weather and
// get_time tools. Each test file writes its own tools and Planner over them (their acts differ).
#pragma once

#include <string>

namespace covenant_test::trip {

struct WeatherArgs {
  std::string city;
  friend bool operator==(const WeatherArgs&, const WeatherArgs&) = default;
};
struct Weather {
  double celsius = 0;
  std::string sky;
};

struct TimeArgs {
  std::string zone;
};
struct Time {
  std::string time;
};

struct Trip {
  std::string city;
};
struct Advice {
  std::string advice;
};

}  // namespace covenant_test::trip
