/** Order and customer inputs shared by validate and apply. All money is integer cents. */
export interface OrderItem {
  id: string;
  /** Unit price in cents. */
  price: number;
  quantity: number;
  category?: string;
}

export interface Order {
  /** Optional order id; on validate it makes the service keep a quote for apply. */
  id?: string;
  /** Order value in cents, before any discount. */
  value: number;
  currency?: string;
  items?: OrderItem[];
}

export interface Customer {
  id?: string;
  segment?: string;
  registration_date?: string;
  orders_count?: number;
  region?: string;
}

/** One order line's share of the discount. `original_price` is the line total (price × quantity). */
export interface AppliedLine {
  item_id: string;
  original_price: number;
  discount_amount: number;
  final_price: number;
}
