// contract_options::check: options that cannot work are refused when the contract is made.
#include "covenant/contract/contract_options.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "engine/retry_check.hpp"

namespace covenant {

void contract_options::check() const {
  if (std::string problem = detail::retry_problem(retry, "retry."); !problem.empty())
    throw std::invalid_argument("covenant::contract_options: " + problem);
  if (!std::isfinite(budget.max_cost_usd) || budget.max_cost_usd < 0)
    throw std::invalid_argument("covenant::contract_options: budget.max_cost_usd must be a finite number of dollars, 0 "
                                "or more (0: no cap)");
  if (budget.max_cost_usd > 0 && !prices)
    throw std::invalid_argument("covenant::contract_options: budget.max_cost_usd needs prices (contract_options::prices) "
                                "to know what a call costs");
  if (agent.max_steps < 0)
    throw std::invalid_argument("covenant::contract_options: agent.max_steps must be 0 or more (0: the model may "
                                "call no tool)");
  if (agent.tool_timeout.count() < 0)
    throw std::invalid_argument("covenant::contract_options: agent.tool_timeout must be 0 (no limit) or more");
}

}  // namespace covenant
